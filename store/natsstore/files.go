package natsstore

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// chunkSize is the size of the chunks a file is written in (the object store's default).
const chunkSize = 128 << 10

// putObject writes r as object name of the files' object store, in the object store's own
// format (chunks on $O.<bucket>.C.<nuid>, then the object's info on
// $O.<bucket>.M.<base64url name>, rolling up the previous one), so that the object store
// reads, lists and deletes it as its own.
//
// It does not use ObjectStore.Put: that publishes asynchronously through a JetStream
// context of its own, which starts a goroutine that never ends when the Put returns before
// the goroutine has run (nats.go v1.55.0: resetPendingAcksOnReconnect then waits on a nil
// channel). Put's quick failures (a full store) make that likely. Here every chunk is a
// synchronous publish: no goroutine, and each chunk's error (full, unavailable) is its own.
func (s *Store) putObject(ctx context.Context, name string, r io.Reader) error {
	old, err := s.files.GetInfo(ctx, name, jetstream.GetObjectInfoShowDeleted())
	if err != nil && !errors.Is(err, jetstream.ErrObjectNotFound) {
		return err
	}
	bucket := s.o.Bucket + "_files"
	id := rand.Text() // a subject token, unique: the new chunks never mix with the old
	chunks := fmt.Sprintf("$O.%s.C.%s", bucket, id)
	fail := func(err error) error {
		s.purgeChunks(chunks)
		return err
	}
	h := sha256.New()
	buf := make([]byte, chunkSize)
	info := jetstream.ObjectInfo{
		ObjectMeta: jetstream.ObjectMeta{Name: name, Opts: &jetstream.ObjectMetaOptions{ChunkSize: chunkSize}},
		Bucket:     bucket,
		NUID:       id,
	}
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			h.Write(buf[:n])
			// The publish has copied buf out by the time it returns.
			if _, err := s.js.PublishMsg(ctx, &nats.Msg{Subject: chunks, Data: buf[:n]}); err != nil {
				return fail(err)
			}
			info.Size += uint64(n)
			info.Chunks++
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fail(rerr)
		}
	}
	info.Digest = jetstream.GetObjectDigestValue(h)
	meta := nats.NewMsg(fmt.Sprintf("$O.%s.M.%s", bucket, base64.URLEncoding.EncodeToString([]byte(name))))
	meta.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	if meta.Data, err = json.Marshal(info); err != nil {
		return fail(err)
	}
	if _, err := s.js.PublishMsg(ctx, meta); err != nil {
		return fail(err)
	}
	if old != nil && !old.Deleted && old.NUID != "" {
		s.purgeChunks(fmt.Sprintf("$O.%s.C.%s", bucket, old.NUID))
	}
	return nil
}

// purgeChunks removes the chunks on subject, best effort: chunks left behind by a failure
// go with the bucket's TTL anyway.
func (s *Store) purgeChunks(subject string) {
	ctx, cancel := context.WithTimeout(context.Background(), s.o.OpTimeout)
	defer cancel()
	_ = s.filesStream.Purge(ctx, jetstream.WithPurgeSubject(subject))
}
