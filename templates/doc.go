// Package templates holds forms defined once, by an operator or a program, that agents ask
// by name: elicitd's ask_user takes {"template": "NAME"} in place of a whole form, and its
// input schema lists the names.
//
// A template is a form in the JSON form language of package validator (the "form" ask_user
// accepts), compiled with validator.Compile when it is added. Its name is what ask_user is
// given: 1 to 64 characters, lower-case letters, digits, '_' and '-', starting with a letter
// or a digit (NamePattern). A directory of templates holds one NAME.json file per template.
//
// A Set is the templates a server asks. It is built at start-up (New, then Add and Load),
// and changes all at once or not at all: Load reads every file first and adds nothing
// unless every one is good, reporting every problem of every file together as an *Error
// (the file, the field and what is wrong, with the line and column of bad JSON). A server
// that reloads its templates builds a new Set and swaps it in only when Load succeeded.
//
// A program may ship templates of its own (AddBuiltin): a file of the same name in a
// directory loaded later replaces it, for instance to reword a tool's form in another
// language, provided the builtin's Fits check accepts the file (WordingOnly accepts changes
// of wording only). Any other name that is added twice is refused.
//
// A Set is safe for concurrent use. Templates are immutable once added.
package templates
