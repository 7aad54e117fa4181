// The trace viewer's timeline: one canvas row per lane (and the bench dialect's
// scheduler), one per request, drawn by hand. Wheel zooms around the pointer, dragging
// pans, double-click fits, hovering shows an event's details, clicking a request row
// selects it (its flows are drawn as arrows to the lane jobs that served it).
// Drawn by hand: npm's timeline libraries (vis-timeline and the like) make a DOM node per
// item and lag at the thousands of lane jobs a few seconds hold; uPlot, which draws the
// CDFs, plots series against one x axis and has no tracks of intervals.
'use strict';

(() => {
  const specd = (window.specd = window.specd || {});
  const GUTTER = 150, AXIS = 26, LANE_H = 30, HEADER_H = 22, REQUEST_H = 18, MAX_REQUESTS = 400;
  const COLORS = {
    verify: '#2f6fde', draft: '#e0821e', 'target prefill': '#7b4fd6', 'draft prefill': '#b48de6',
    'verify + prefill': '#5a5fdb', 'map prefixes': '#9aa3ad',
    prefill: '#9a6ee0', calibrate: '#9aa3ad', round: '#1f9bb0', queued: '#c9ced6', burst: '#2a9d5c',
    generating: '#8fb8ef',
  };
  const color = (name) => COLORS[name] || '#6c7a89';

  function niceStep(rangeUs, pixels) {
    const raw = rangeUs / Math.max(1, pixels / 110);
    const power = 10 ** Math.floor(Math.log10(raw));
    return [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw);
  }

  function formatOffset(us, step) {
    if (step >= 1e6) return `${(us / 1e6).toFixed(0)} s`;
    if (step >= 1e3) return `${(us / 1e3).toFixed(step >= 1e4 ? 0 : 1)} ms`;
    return `${(us / 1e3).toFixed(3)} ms`;
  }

  class Timeline {
    constructor(container, tooltip, { onSelect }) {
      this.container = container;
      this.canvas = container.querySelector('canvas');
      this.tooltip = tooltip;
      this.onSelect = onSelect;
      this.model = null;
      this.selected = null;
      this.rows = [];
      this.view = [0, 1];
      this.userMoved = false;
      this.listen();
    }

    // Live refreshes keep the view the user zoomed or panned to; otherwise they follow the window.
    setModel(model, keepView) {
      this.model = model;
      this.layout();
      if (keepView && this.userMoved) this.draw();
      else this.fit();
    }

    layout() {
      const m = this.model;
      this.rows = [];
      let y = AXIS;
      const push = (type, h, data, label) => {
        this.rows.push({ type, y, h, data, label });
        y += h;
      };
      for (const lane of m.rows) push(lane.kind, LANE_H, lane, lane.name);
      const shown = m.requests.slice(-MAX_REQUESTS);
      const hidden = m.requests.length - shown.length;
      push('header', HEADER_H, null, `requests (${m.requests.length}${hidden ? `, the last ${shown.length} shown` : ''})`);
      for (const r of shown) push('request', REQUEST_H, r, r.id);
      this.height = y + 6;
    }

    fit() {
      const m = this.model;
      this.userMoved = false;
      const pad = Math.max(1, (m.dataEnd - m.dataStart) * 0.02);
      this.view = [m.dataStart - pad, m.dataEnd + pad];
      this.draw();
    }

    x(ts) {
      return GUTTER + ((ts - this.view[0]) / (this.view[1] - this.view[0])) * this.plotWidth;
    }

    time(px) {
      return this.view[0] + ((px - GUTTER) / this.plotWidth) * (this.view[1] - this.view[0]);
    }

    draw() {
      if (!this.model) return;
      const width = this.container.clientWidth, dpr = window.devicePixelRatio || 1;
      this.plotWidth = width - GUTTER - 12;
      this.canvas.style.width = `${width}px`;
      this.canvas.style.height = `${this.height}px`;
      this.canvas.width = Math.round(width * dpr);
      this.canvas.height = Math.round(this.height * dpr);
      const g = this.canvas.getContext('2d');
      g.setTransform(dpr, 0, 0, dpr, 0, 0);
      g.font = '12px system-ui, sans-serif';
      g.textBaseline = 'middle';
      this.drawAxis(g);
      g.save();
      g.beginPath();
      g.rect(GUTTER, AXIS, this.plotWidth, this.height - AXIS);
      g.clip();
      this.rows.forEach((row, i) => this.drawRow(g, row, i));
      if (this.selected) this.drawFlows(g, this.selected);
      g.restore();
      this.rows.forEach((row) => this.drawLabel(g, row));
    }

    drawAxis(g) {
      g.fillStyle = '#fff';
      g.fillRect(0, 0, this.canvas.width, this.height);
      const step = niceStep(this.view[1] - this.view[0], this.plotWidth);
      const origin = this.model.dataStart;
      g.strokeStyle = '#eceff3';
      g.fillStyle = '#5b6470';
      g.textAlign = 'center';
      for (let t = Math.ceil((this.view[0] - origin) / step) * step; origin + t <= this.view[1]; t += step) {
        const px = Math.round(this.x(origin + t)) + 0.5;
        g.beginPath();
        g.moveTo(px, AXIS - 6);
        g.lineTo(px, this.height);
        g.stroke();
        g.fillText(formatOffset(t, step), px, AXIS / 2 - 2);
      }
      g.textAlign = 'left';
    }

    drawRow(g, row, i) {
      if (row.type === 'header') {
        g.fillStyle = '#f2f4f7';
        g.fillRect(0, row.y, GUTTER + this.plotWidth + 12, row.h);
        return;
      }
      if (row.type === 'request' && row.data === this.selected) {
        g.fillStyle = '#fff4c2';
        g.fillRect(GUTTER, row.y, this.plotWidth, row.h);
      } else if (i % 2) {
        g.fillStyle = '#fafbfc';
        g.fillRect(GUTTER, row.y, this.plotWidth, row.h);
      }
      if (row.type === 'request') this.drawRequest(g, row);
      else this.drawSlices(g, row, row.data.slices, 4);
    }

    drawSlices(g, row, slices, inset) {
      for (const s of slices) {
        if (s.ts + s.dur < this.view[0] || s.ts > this.view[1]) continue;
        const x0 = this.x(s.ts), w = Math.max(1, this.x(s.ts + s.dur) - x0);
        g.fillStyle = color(s.name);
        g.fillRect(x0, row.y + inset, w, row.h - 2 * inset);
        if (w > 46) {
          g.fillStyle = '#fff';
          g.fillText(s.name, Math.max(x0, GUTTER) + 4, row.y + row.h / 2, w - 8);
        }
      }
    }

    drawRequest(g, row) {
      const r = row.data;
      this.drawSlices(g, row, r.spans.filter((s) => s.name !== 'burst'), 3);
      g.strokeStyle = color('burst');
      for (const b of r.bursts) {
        const x0 = this.x(b.ts), x1 = this.x(Number.isFinite(b.args.written_us) ? b.args.written_us : b.ts + b.dur);
        g.fillStyle = color('burst');
        g.fillRect(x0, row.y + 2, Math.max(2, this.x(b.ts + b.dur) - x0), row.h - 4);
        g.beginPath();
        g.moveTo(x0, row.y + row.h / 2 + 0.5);
        g.lineTo(Math.max(x1, x0 + 2), row.y + row.h / 2 + 0.5);
        g.stroke();
      }
      if (r.done) {
        const px = this.x(r.done.ts), cy = row.y + row.h / 2;
        g.fillStyle = '#222';
        g.beginPath();
        g.moveTo(px, cy - 5);
        g.lineTo(px + 4, cy);
        g.lineTo(px, cy + 5);
        g.lineTo(px - 4, cy);
        g.fill();
      }
    }

    drawFlows(g, request) {
      const from = this.rows.find((r) => r.data === request);
      if (!from) return;
      g.strokeStyle = 'rgba(194, 56, 124, 0.75)';
      g.fillStyle = 'rgba(194, 56, 124, 0.9)';
      for (const f of request.flows) {
        const to = this.rows.find((r) => r.data === f.lane);
        if (!to) continue;
        const x0 = this.x(f.from), y0 = from.y + from.h / 2, x1 = this.x(f.to), y1 = to.y + to.h - 4;
        g.beginPath();
        g.moveTo(x0, y0);
        g.bezierCurveTo(x0, (y0 + y1) / 2, x1, (y0 + y1) / 2, x1, y1);
        g.stroke();
        g.beginPath();
        g.moveTo(x1, y1);
        g.lineTo(x1 - 3, y1 + 6);
        g.lineTo(x1 + 3, y1 + 6);
        g.fill();
      }
    }

    drawLabel(g, row) {
      g.fillStyle = row.type === 'header' ? '#f2f4f7' : row.data === this.selected ? '#fff4c2' : '#fff';
      g.fillRect(0, row.y, GUTTER - 6, row.h);
      g.fillStyle = row.type === 'request' ? '#333' : '#111';
      g.font = row.type === 'request' ? '12px ui-monospace, monospace' : '600 12px system-ui, sans-serif';
      g.fillText(row.label, 8, row.y + row.h / 2, GUTTER - 18);
      g.font = '12px system-ui, sans-serif';
    }

    rowAt(py) {
      return this.rows.find((r) => py >= r.y && py < r.y + r.h) || null;
    }

    // The event under the pointer: a slice of a lane row or a span of a request row.
    hit(px, py) {
      const row = this.rowAt(py);
      if (!row || row.type === 'header' || px < GUTTER) return { row, item: null };
      const t = this.time(px), slack = (3 * (this.view[1] - this.view[0])) / this.plotWidth;
      const items = row.type === 'request' ? row.data.spans : row.data.slices;
      let best = null;
      for (const s of items) {
        if (t >= s.ts - slack && t <= s.ts + s.dur + slack && (!best || s.dur < best.dur)) best = s;
      }
      return { row, item: best };
    }

    listen() {
      const c = this.canvas;
      let drag = null;
      c.addEventListener('wheel', (e) => {
        e.preventDefault();
        this.zoom(Math.exp(e.deltaY / 400), e.offsetX);
      }, { passive: false });
      c.addEventListener('mousedown', (e) => {
        drag = { x: e.offsetX, view: [...this.view], moved: false };
      });
      window.addEventListener('mouseup', (e) => {
        if (drag && !drag.moved && e.target === c) this.click(e.offsetX, e.offsetY);
        drag = null;
      });
      c.addEventListener('mousemove', (e) => {
        if (drag && Math.abs(e.offsetX - drag.x) > 3) {
          drag.moved = true;
          this.userMoved = true;
          const shift = ((e.offsetX - drag.x) / this.plotWidth) * (drag.view[1] - drag.view[0]);
          this.view = [drag.view[0] - shift, drag.view[1] - shift];
          this.draw();
        }
        this.hover(e.offsetX, e.offsetY);
      });
      c.addEventListener('mouseleave', () => this.hover(-1, -1));
      c.addEventListener('dblclick', () => this.fit());
      window.addEventListener('resize', () => this.draw());
    }

    zoom(factor, px = GUTTER + this.plotWidth / 2) {
      const t = this.time(Math.max(GUTTER, px));
      const span = Math.max(20, (this.view[1] - this.view[0]) * factor);
      const frac = (t - this.view[0]) / (this.view[1] - this.view[0]);
      this.view = [t - frac * span, t + (1 - frac) * span];
      this.userMoved = true;
      this.draw();
    }

    click(px, py) {
      const { row } = this.hit(px, py);
      if (row && row.type === 'request') this.select(row.data);
    }

    select(request) {
      this.selected = request;
      this.draw();
      this.onSelect(request);
    }

    hover(px, py) {
      const { row, item } = px < 0 ? { row: null, item: null } : this.hit(px, py);
      if (!item) {
        this.tooltip.hidden = true;
        return;
      }
      specd.traceDetails.fillTooltip(this.tooltip, row, item);
      const box = this.container.getBoundingClientRect();
      this.tooltip.hidden = false;
      const left = Math.min(px + 14, box.width - this.tooltip.offsetWidth - 4);
      this.tooltip.style.left = `${Math.max(4, left)}px`;
      this.tooltip.style.top = `${py + 16}px`;
    }

    // Where (in client coordinates) the middle of a request's `nth` span named `name` is
    // drawn, scrolled into view first; tests and keyboard users start from here.
    pointOf(requestId, name, nth = 0) {
      const row = this.rows.find((r) => r.type === 'request' && r.data.id === requestId);
      const span = row && row.data.spans.filter((s) => s.name === name)[nth];
      if (!span) return null;
      this.canvas.scrollIntoView({ block: 'nearest' });
      const box = this.canvas.getBoundingClientRect();
      window.scrollBy(0, Math.max(0, box.top + row.y + row.h - window.innerHeight + 20));
      const after = this.canvas.getBoundingClientRect();
      return { x: after.left + this.x(span.ts + span.dur / 2), y: after.top + row.y + row.h / 2 };
    }
  }

  specd.Timeline = Timeline;
})();
