package bridge

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/locktui/locktui/provider"
)

// Metric names, exported on /metrics.
const (
	MetricConnections  = "locktui_bridge_connections"
	MetricRequests     = "locktui_bridge_requests_total"
	MetricAcquireWait  = "locktui_bridge_acquire_wait_seconds"
	MetricLeaseHold    = "locktui_bridge_lease_hold_seconds"
	MetricLeasesHeld   = "locktui_bridge_leases_held"
	MetricRenewals     = "locktui_bridge_lease_renewals_total"
	MetricLeasesLost   = "locktui_bridge_leases_lost_total"
	MetricRejected     = "locktui_bridge_rejected_upgrades_total"
	MetricClosedByRule = "locktui_bridge_policy_closes_total"
	MetricExpireRaised = "locktui_bridge_lease_expire_raised_total"
)

// Label values.
const (
	resultOK           = "ok"      // requests_total result of a success
	opInvalid          = "invalid" // requests_total op of a frame whose op could not be read
	rejectUnauthorized = "unauthorized"
	rejectOrigin       = "origin"
	rejectSubprotocol  = "subprotocol"
	rejectShuttingDown = "shutting_down"
	// rejectTooManyConnections and rejectTooManyForToken: --max-connections and
	// --max-connections-per-token.
	rejectTooManyConnections = "too_many_connections"
	rejectTooManyForToken    = "too_many_connections_for_token"
	closeReasonBinary        = "binary"
	closeReasonFlood         = "flood"
	closeReasonTooLarge      = "too_large"
)

// Histogram buckets: bucketsCount exponential buckets from the start value, ×bucketsFactor.
const (
	waitBucketsStart = 0.001 // seconds
	holdBucketsStart = 0.01  // seconds
	bucketsFactor    = 4
	bucketsCount     = 10
)

// metrics are the bridge's Prometheus metrics, in a registry of their own (never the global
// one), so that several servers (tests) do not collide.
type metrics struct {
	registry    *prometheus.Registry
	connections prometheus.Gauge
	requests    *prometheus.CounterVec
	acquireWait prometheus.Histogram
	leaseHold   prometheus.Histogram
	leasesHeld  prometheus.Gauge
	renewals    prometheus.Counter
	leasesLost  prometheus.Counter
	rejected    *prometheus.CounterVec
	policy      *prometheus.CounterVec
	// expireRaised counts leases whose expire was raised to --min-lease-expire.
	expireRaised prometheus.Counter
}

func newMetrics() *metrics {
	m := &metrics{
		registry: prometheus.NewRegistry(),
		connections: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricConnections,
			Help: "Open WebSocket connections."}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRequests,
			Help: `Requests answered, by op ("invalid" for undecodable frames) and result ("ok" or the error code).`},
			[]string{"op", "result"}),
		acquireWait: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricAcquireWait,
			Help:    "Time spent waiting for a key before it was acquired, per key (acquire and lease).",
			Buckets: prometheus.ExponentialBuckets(waitBucketsStart, bucketsFactor, bucketsCount)}),
		leaseHold: prometheus.NewHistogram(prometheus.HistogramOpts{Name: MetricLeaseHold,
			Help:    "Time a lease held a key until it was released or lost, per key.",
			Buckets: prometheus.ExponentialBuckets(holdBucketsStart, bucketsFactor, bucketsCount)}),
		leasesHeld: prometheus.NewGauge(prometheus.GaugeOpts{Name: MetricLeasesHeld,
			Help: "Leases currently held and renewed for clients."}),
		renewals: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricRenewals,
			Help: "Successful lease renewals, per key."}),
		leasesLost: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricLeasesLost,
			Help: "Leases lost: a key expired or changed owner, no renewal was confirmed before the lease's deadline, or Redis restarted."}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricRejected,
			Help: "WebSocket upgrades refused, by reason (unauthorized, origin, subprotocol, shutting_down, too_many_connections, too_many_connections_for_token)."},
			[]string{"reason"}),
		policy: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricClosedByRule,
			Help: "Connections closed by the bridge for breaking the protocol, by reason (binary, flood, too_large)."},
			[]string{"reason"}),
		expireRaised: prometheus.NewCounter(prometheus.CounterOpts{Name: MetricExpireRaised,
			Help: "Leases asked for with an expire below --min-lease-expire, which they got instead."}),
	}
	m.registry.MustRegister(m.connections, m.requests, m.acquireWait, m.leaseHold, m.leasesHeld,
		m.renewals, m.leasesLost, m.rejected, m.policy, m.expireRaised,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// LockEvent records the provider's lock events: it is the provider's Observer.
func (m *metrics) LockEvent(e provider.Event) {
	switch e.Kind {
	case provider.EventAcquired:
		m.acquireWait.Observe(e.Wait.Seconds())
	case provider.EventRenewed:
		m.renewals.Inc()
	case provider.EventReleased, provider.EventLost:
		if e.Held > 0 { // only leases know how long they held a key
			m.leaseHold.Observe(e.Held.Seconds())
		}
	}
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
}
