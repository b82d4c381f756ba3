package dashboard

import (
	"fmt"
	"math"
	"strings"

	"github.com/leaseq/leaseq"
)

// The charts' drawing box, in SVG user units; the page scales it to fit.
const (
	chartWidth  = 600
	chartHeight = 190
	plotLeft    = 44 // room for the y labels
	plotRight   = 10
	plotTop     = 10
	plotBottom  = 24 // room for the x labels
)

// chartView is one chart drawn on the server as inline SVG: the axes'
// ticks, one column per minute (a hover target carrying the minute's
// numbers as its title, and its bars), and for the depth chart a line and
// the area under it. Coordinates are SVG user units.
type chartView struct {
	Label          string // what a screen reader says of the chart
	Width, Height  int
	Left, Right    float64
	Top, Bottom    float64
	YTicks, XTicks []tick
	Columns        []column
	Line, Area     string // SVG path data, depth chart only
	Empty          bool   // nothing happened in the hour
	EmptyX, EmptyY float64
	EmptyText      string
}

// PlotHeight is the height of the plot, the columns' hover targets.
func (c chartView) PlotHeight() float64 { return c.Bottom - c.Top }

// tick is an axis label with its gridline position.
type tick struct {
	X, Y  float64
	Label string
}

// column is one minute of a chart: its hover target from X, W wide, and
// its bars from BarX, BarW wide, with a gap between neighbours.
type column struct {
	X, W       float64
	BarX, BarW float64
	Title      string
	Bars       []bar
}

// bar is one stacked part of a column: done or quarantined jobs.
type bar struct {
	Y, H  float64
	Class string
}

// hourView is the overview's last hour, summed over every queue.
type hourView struct {
	Enqueued, Done, Quarantined int
	Depth                       int // now
	Throughput, DepthChart      chartView
}

// sumMinutes adds the minutes of every queue by their start. Each queue
// read its own clock, so a minute may have turned between two of them:
// minutes outside the first queue's hour are left out.
func sumMinutes(perQueue [][]leaseq.Minute) []leaseq.Minute {
	if len(perQueue) == 0 {
		return nil
	}
	sum := append([]leaseq.Minute(nil), perQueue[0]...)
	at := make(map[int64]int, len(sum)) // by the minute's Unix milliseconds
	for i, m := range sum {
		at[m.Start.UnixMilli()] = i
	}
	for _, ms := range perQueue[1:] {
		for _, m := range ms {
			if i, ok := at[m.Start.UnixMilli()]; ok {
				sum[i].Enqueued += m.Enqueued
				sum[i].Done += m.Done
				sum[i].Quarantined += m.Quarantined
				sum[i].Depth += m.Depth
			}
		}
	}
	return sum
}

// newHourView draws the charts of the minutes ms.
func newHourView(ms []leaseq.Minute) hourView {
	h := hourView{}
	for _, m := range ms {
		h.Enqueued += m.Enqueued
		h.Done += m.Done
		h.Quarantined += m.Quarantined
	}
	if len(ms) > 0 {
		h.Depth = ms[len(ms)-1].Depth
	}
	h.Throughput = throughputChart(ms, h)
	h.DepthChart = depthChart(ms, h)
	return h
}

// frame is a chart with its box, its x ticks, and y ticks on a scale
// that holds peak.
func frame(ms []leaseq.Minute, peak int, label string) (chartView, int) {
	c := chartView{Label: label, Width: chartWidth, Height: chartHeight,
		Left: plotLeft, Right: chartWidth - plotRight, Top: plotTop, Bottom: chartHeight - plotBottom}
	step, n := niceScale(peak)
	top := step * n
	for i := 0; i <= n; i++ {
		c.YTicks = append(c.YTicks, tick{X: c.Left - 6, Y: c.y(step*i, top), Label: compact(step * i)})
	}
	w := c.colWidth(len(ms))
	for i, m := range ms {
		if i%15 != 0 && i != len(ms)-1 {
			continue
		}
		label := m.Start.UTC().Format("15:04")
		if i == len(ms)-1 {
			label = "now"
		}
		c.XTicks = append(c.XTicks, tick{X: round1(c.Left + (float64(i)+0.5)*w), Y: c.Bottom + 16, Label: label})
	}
	c.EmptyX, c.EmptyY = round1((c.Left+c.Right)/2), round1((c.Top+c.Bottom)/2)
	return c, top
}

// y is the vertical position of the value v on a scale of 0..top.
func (c chartView) y(v, top int) float64 {
	return round1(c.Bottom - float64(v)/float64(top)*(c.Bottom-c.Top))
}

// colWidth is the width of one minute's column.
func (c chartView) colWidth(n int) float64 {
	return (c.Right - c.Left) / float64(max(n, 1))
}

// throughputChart stacks each minute's done jobs (below) and quarantined
// jobs (above).
func throughputChart(ms []leaseq.Minute, h hourView) chartView {
	peak := 0
	for _, m := range ms {
		peak = max(peak, m.Done+m.Quarantined)
	}
	c, top := frame(ms, peak, fmt.Sprintf("Jobs finished per minute over the last hour: %d done, %d quarantined.", h.Done, h.Quarantined))
	w := c.colWidth(len(ms))
	for i, m := range ms {
		col := column{X: round1(c.Left + float64(i)*w), W: round1(w),
			Title: fmt.Sprintf("%s UTC: %d done, %d quarantined, %d enqueued", m.Start.UTC().Format("15:04"), m.Done, m.Quarantined, m.Enqueued)}
		col.BarX, col.BarW = round1(c.Left+(float64(i)+0.15)*w), round1(w*0.7)
		if m.Done > 0 {
			col.Bars = append(col.Bars, bar{Y: c.y(m.Done, top), H: round1(c.Bottom - c.y(m.Done, top)), Class: "done"})
		}
		if m.Quarantined > 0 {
			y0, y1 := c.y(m.Done, top), c.y(m.Done+m.Quarantined, top)
			col.Bars = append(col.Bars, bar{Y: y1, H: round1(y0 - y1), Class: "quarantined"})
		}
		c.Columns = append(c.Columns, col)
	}
	if peak == 0 {
		c.Empty, c.EmptyText = true, "No job finished in the last hour"
	}
	return c
}

// depthChart draws how many jobs were pending or leased at each minute's
// end, as a line through the middle of each minute's column.
func depthChart(ms []leaseq.Minute, h hourView) chartView {
	peak := 0
	for _, m := range ms {
		peak = max(peak, m.Depth)
	}
	c, top := frame(ms, peak, fmt.Sprintf("Jobs pending or leased over the last hour: %d now.", h.Depth))
	w := c.colWidth(len(ms))
	var line, area strings.Builder
	for i, m := range ms {
		x := round1(c.Left + (float64(i)+0.5)*w)
		y := c.y(m.Depth, top)
		cmd := "L"
		if i == 0 {
			cmd = "M"
			fmt.Fprintf(&area, "M%g %g ", x, c.Bottom)
		}
		fmt.Fprintf(&line, "%s%g %g ", cmd, x, y)
		fmt.Fprintf(&area, "L%g %g ", x, y)
		c.Columns = append(c.Columns, column{X: round1(c.Left + float64(i)*w), W: round1(w),
			Title: fmt.Sprintf("%s UTC: %d pending or leased at the minute's end", m.Start.UTC().Format("15:04"), m.Depth)})
		if i == len(ms)-1 {
			fmt.Fprintf(&area, "L%g %g Z", x, c.Bottom)
		}
	}
	c.Line, c.Area = strings.TrimSpace(line.String()), area.String()
	if peak == 0 {
		c.Empty, c.EmptyText = true, "No job waited in the last hour"
	}
	return c
}

// niceScale divides a y scale that holds v, with 5% to spare so the
// tallest mark does not touch the top, into 3 to 5 whole steps of 1, 2 or
// 5 times a power of ten, the lowest such scale: 25 is 3 steps of 10, 202
// is 5 of 50, 0 is 3 of 1.
func niceScale(v int) (step, n int) {
	best := 0
	for p := 1; best == 0 || p <= best; p *= 10 {
		for _, s := range []int{p, 2 * p, 5 * p} {
			for _, k := range []int{3, 4, 5} {
				if s*k*100 >= v*105 && (best == 0 || s*k < best) {
					best, step, n = s*k, s, k
				}
			}
		}
		if p > math.MaxInt/100 {
			break
		}
	}
	return step, n
}

// compact prints an axis value briefly: 950, 12k, 3.5M.
func compact(v int) string {
	switch {
	case v >= 1_000_000:
		return trimZero(float64(v)/1e6) + "M"
	case v >= 10_000:
		return trimZero(float64(v)/1e3) + "k"
	}
	return fmt.Sprint(v)
}

func trimZero(f float64) string {
	return strings.TrimSuffix(fmt.Sprintf("%.1f", f), ".0")
}

// round1 rounds to a tenth of a unit, which is finer than a pixel at any
// size the page shows the chart and keeps the SVG short.
func round1(f float64) float64 { return math.Round(f*10) / 10 }
