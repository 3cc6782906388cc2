package memory

// FileQueueLen is the length of s's file expiry queue, for tests.
func FileQueueLen(s *Store) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.fileQueue)
}
