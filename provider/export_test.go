package provider

// PendingWakeups returns how many wake-up registrations p holds: zero whenever no call of p is
// waiting for a key. For tests only.
func PendingWakeups(p *Provider) int {
	p.wakeups.mu.Lock()
	defer p.wakeups.mu.Unlock()
	n := 0
	for _, set := range p.wakeups.waiting {
		n += len(set)
	}
	return n
}
