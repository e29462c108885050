package faultproxy

// SetQueueLimit changes how many bytes one direction buffers, so a test can reach the limit.
func SetQueueLimit(p *Proxy, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.queueLimit = n
}

// Queued returns how many bytes the open links of p hold in their queues, so a test can wait
// until the proxy has read what it sent.
func Queued(p *Proxy) int {
	n := 0
	for _, l := range p.openLinks() {
		for i := range l.q {
			l.q[i].mu.Lock()
			n += l.q[i].size
			l.q[i].mu.Unlock()
		}
	}
	return n
}
