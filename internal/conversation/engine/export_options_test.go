package engine

import "time"

// The engine tests change a running test service the way Options would set
// it up; production code sets these only through New's Options.

// SetReplica is Options.Replica and Options.LeaseTTL.
func (s *Service) SetReplica(id string, ttl time.Duration) { s.setReplica(id, ttl) }

// SetApprovalTTL is Options.ApprovalTTL.
func (s *Service) SetApprovalTTL(ttl time.Duration) {
	s.approvalTTL = ttl
	s.keeper = keeperOf(s)
	s.closer = closerOf(s)
}

// SetRoute is Options.Gateway.
func (s *Service) SetRoute(gateway bool) {
	s.gateway = gateway
	s.keeper = keeperOf(s)
	s.closer = closerOf(s)
}

// ObserveExpiry makes f hear ApprovalExpired (Options.Observer).
func (s *Service) ObserveExpiry(f func(id string, at time.Time)) { s.observer = expiryObserver(f) }

type expiryObserver func(id string, at time.Time)

func (expiryObserver) LeaseTakeover()                            {}
func (expiryObserver) UpstreamFirstEvent(time.Duration)          {}
func (f expiryObserver) ApprovalExpired(id string, at time.Time) { f(id, at) }
func (expiryObserver) EventWrite(int, time.Duration)             {}
