package bench

import (
	"fmt"
	"io"
	"strings"
)

// WriteTable writes the report's results as one Markdown table (the README's benchmark table):
// a row per scenario and implementation, single-process, then multi-process, then cluster, with
// the ratio to stock from the same run.
func WriteTable(w io.Writer, rep *Report) error {
	var b strings.Builder
	b.WriteString("| scenario | impl | procs × workers | rate | of ideal | lock busy | wait p50 / p99 / max ms | p99 with timeouts ms | timeouts | same-worker hand-offs | Jain workers / procs | share | overlaps | CPU ms per 1k executes (client / bridge / Redis) | Redis commands per execute | keys left | machine busy / steal | × stock |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rep.Scenarios {
		b.WriteString(tableRow(r, ratioCell(rep.Ratios[r.Name], r.Impl+"_over_stock", "")))
	}
	for _, r := range rep.MultiProcess {
		cell := ratioCell(rep.Ratios[r.Name], r.Impl+"_over_stock", "")
		if r.Impl == "stock" {
			cell = ratioCell(rep.Ratios[r.Name], "stock_over_all_stock", " of all-stock")
		}
		b.WriteString(tableRow(r, cell))
	}
	for _, r := range rep.Cluster {
		b.WriteString(tableRow(r, ratioCell(rep.Ratios[r.Name], r.Impl+"_over_"+r.Impl+"_standalone", " of standalone")))
	}
	for _, n := range rep.ClusterNotes {
		fmt.Fprintf(&b, "\ncluster: %s", n)
	}
	if len(rep.ClusterNotes) > 0 {
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func tableRow(r Result, ratio string) string {
	procs := max(r.Processes, 1)
	cells := []string{
		r.Name, r.Impl,
		fmt.Sprintf("%d × %d", procs, r.Workers/procs),
	}
	if r.Contended() {
		cells = append(cells,
			fmt.Sprintf("%.0f cs/s", r.Throughput()),
			pct(r.Efficiency), pct(r.LockBusy),
			fmt.Sprintf("%s / %s / %s", num(r.WaitMs.P50), num(r.WaitMs.P99), num(r.WaitMs.Max)),
			numPtr(r.WaitP99TimeoutsMs),
		)
	} else {
		cells = append(cells, fmt.Sprintf("%s ops/s", kilo(r.Throughput())), "", "",
			fmt.Sprintf("latency %s / %s / %s", num(r.LatencyMs.P50), num(r.LatencyMs.P99), num(r.LatencyMs.Max)), "")
	}
	cells = append(cells, fmt.Sprint(r.Timeouts), pct(r.HandoffSameWorker))
	jain := fmt.Sprintf("%.2f", r.Fairness)
	if r.FairnessProcesses != nil {
		jain += fmt.Sprintf(" / %.2f", *r.FairnessProcesses)
	}
	cells = append(cells, jain, pct(r.Share), fmt.Sprint(r.Overlaps))
	cells = append(cells, cpuCell(r), numPtr(r.RedisCmdsPerExec), keysCell(r), machineCell(r), ratio)
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// cpuCell is "client / bridge / Redis" CPU per 1,000 executes, "-" for a part not measured
// (the bridge's outside bridge rows, Redis's on the rows of one implementation of a mixed
// scenario); just the client's when it alone was measured.
func cpuCell(r Result) string {
	if r.BridgeCPUMsPer1k == nil && r.RedisCPUMsPer1k == nil {
		return numPtr(r.CPUMsPer1k)
	}
	part := func(v *float64) string {
		if v == nil {
			return "-"
		}
		return num(*v)
	}
	return part(r.CPUMsPer1k) + " / " + part(r.BridgeCPUMsPer1k) + " / " + part(r.RedisCPUMsPer1k)
}

// keysCell is the keys a run left in Redis, with how many of them have no TTL when some have
// none; empty when not measured.
func keysCell(r Result) string {
	switch {
	case r.KeysLeft == nil:
		return ""
	case r.KeysLeftNoTTL != nil && *r.KeysLeftNoTTL > 0:
		return fmt.Sprintf("%d (%d without TTL)", *r.KeysLeft, *r.KeysLeftNoTTL)
	}
	return fmt.Sprint(*r.KeysLeft)
}

// machineCell is "busy / steal" of the machine over the run (see MetricsDoc).
func machineCell(r Result) string {
	if r.MachineSteal == nil {
		return pct(r.MachineBusy)
	}
	return pct(r.MachineBusy) + " / " + pct(r.MachineSteal)
}

func ratioCell(m map[string]*float64, key, suffix string) string {
	if v, ok := m[key]; ok && v != nil {
		return fmt.Sprintf("%.2f×%s", *v, suffix)
	}
	return ""
}

func pct(v *float64) string {
	if v == nil {
		return ""
	}
	return fmt.Sprintf("%.0f %%", *v*100)
}

// num formats milliseconds with about three significant digits.
func num(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}

func numPtr(v *float64) string {
	if v == nil {
		return ""
	}
	return num(*v)
}

func kilo(v float64) string {
	if v >= 1000 {
		return fmt.Sprintf("%.1f k", v/1000)
	}
	return fmt.Sprintf("%.0f", v)
}
