package engine

import "time"

// SetEndRetry sets the first and the longest delay with which a turn's end
// that could not be stored is tried again.
func SetEndRetry(s *Service, first, longest time.Duration) {
	s.endRetry = [2]time.Duration{first, longest}
}

// SetReadBackWait bounds how long reading a response back waits for it to
// finish.
func SetReadBackWait(s *Service, d time.Duration) {
	s.readBackWait = d
	s.keeper = keeperOf(s)
	s.closer = closerOf(s)
}
