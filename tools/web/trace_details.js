// The trace viewer's text panels: the hover card of one event, a request's waterfall
// (queue, prefill, rounds and bursts on the request's own time axis, with the gaps
// between written bursts) and the window's latency percentiles.
'use strict';

(() => {
  const specd = (window.specd = window.specd || {});
  const { formatMs } = specd.charts;
  const ROUND_ARGS = [['k_planned', 'K planned'], ['drafted', 'drafted'], ['accepted', 'accepted'], ['tokens', 'tokens']];

  function el(tag, attrs = {}, ...children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs)) {
      if (k === 'dataset') Object.assign(e.dataset, v);
      else if (k === 'style') e.style.cssText = v;
      else e.setAttribute(k, v);
    }
    for (const c of children) e.append(c);
    return e;
  }

  const ms = (us) => formatMs(us / 1000);

  function argLines(item) {
    if (item.name === 'burst' && Number.isFinite(item.args.written_us)) {
      return [['tokens', String(item.args.tokens)], ['written', `${ms(item.args.written_us - item.ts)} after the hand-off`]];
    }
    // A round's K planned, drafted, accepted and tokens first, then whatever else it carries.
    const first = ROUND_ARGS.filter(([k]) => item.args[k] !== undefined);
    const named = new Set(first.map(([k]) => k));
    const rest = Object.keys(item.args).filter((k) => !named.has(k)).map((k) => [k, k.replace(/_/g, ' ')]);
    const show = (v) => (typeof v === 'number' ? String(+v.toFixed(3)) : String(v));
    return [...first, ...rest].map(([k, label]) => [label, show(item.args[k])]);
  }

  function fillTooltip(tooltip, row, item) {
    tooltip.replaceChildren(el('strong', {}, `${item.name}`), el('span', { class: 'muted' }, ` ${ms(item.dur)} · ${row.label}`));
    const list = el('dl');
    for (const [k, v] of argLines(item)) list.append(el('dt', {}, k), el('dd', {}, v));
    tooltip.append(list);
    tooltip.dataset.kind = item.name;
    tooltip.dataset.args = JSON.stringify(item.args);
  }

  // Chronological rows; a burst row says how long after the previous written burst it was written.
  function waterfallRows(r) {
    const rows = [];
    let round = 0, burst = 0, lastWritten = null;
    for (const s of r.spans) {
      const kind = specd.traceModel.spanKind(s.name);
      let label = s.name, note = ms(s.dur);
      if (kind === 'round') {
        round += 1;
        label = `round ${round}`;
        note = ROUND_ARGS.filter(([k]) => s.args[k] !== undefined).map(([k, l]) => `${l} ${s.args[k]}`).join(' · ') || note;
      } else if (kind === 'burst') {
        burst += 1;
        const written = Number.isFinite(s.args.written_us) ? s.args.written_us : s.ts + s.dur;
        label = `burst ${burst}`;
        const wrote = Number.isFinite(s.args.written_us) ? ` · written after ${ms(s.args.written_us - s.ts)}` : '';
        note = `${s.args.tokens ?? '?'} tokens${wrote}${lastWritten === null ? '' : ` · gap ${ms(written - lastWritten)}`}`;
        lastWritten = written;
      }
      rows.push({ kind, label, note, span: s });
    }
    return rows;
  }

  function renderWaterfall(container, r) {
    container.replaceChildren();
    if (!r) {
      container.append(el('p', { class: 'muted' }, 'Click a request row in the timeline to see its waterfall.'));
      return;
    }
    const total = Math.max(1, r.end - r.start);
    const drafted = r.rounds.reduce((n, s) => n + (s.args.drafted || 0), 0);
    const accepted = r.rounds.reduce((n, s) => n + (s.args.accepted || 0), 0);
    const facts = [['request', r.id], ['lifetime', ms(r.end - r.start)], ['time to first token', formatMs(r.ttftMs)],
      ['rounds', String(r.rounds.length)], ['bursts', String(r.bursts.length)]];
    if (drafted) facts.push(['accepted / drafted', `${accepted} / ${drafted} (${((100 * accepted) / drafted).toFixed(0)}%)`]);
    if (r.done) facts.push(['finish', `${r.done.args.finish_reason ?? '?'}, ${r.done.args.completion_tokens ?? '?'} tokens`]);
    const head = el('dl', { class: 'facts' });
    for (const [k, v] of facts) head.append(el('div', {}, el('dt', {}, k), el('dd', {}, v)));
    container.append(head);
    if (!r.rounds.length) container.append(el('p', { class: 'muted' }, 'This trace has no per-request rounds or bursts (a specd bench --trace file): the scheduler row holds the rounds.'));
    const table = el('div', { class: 'waterfall', dataset: { request: r.id } });
    for (const row of waterfallRows(r)) {
      const left = (100 * (row.span.ts - r.start)) / total, width = Math.max(0.3, (100 * row.span.dur) / total);
      const bar = el('div', { class: `bar ${row.kind.replace(/\s/g, '-')}`, style: `left:${left}%;width:${width}%` });
      table.append(el('div', { class: 'wf-row', dataset: { kind: row.kind } },
        el('span', { class: 'wf-label' }, row.label), el('span', { class: 'wf-track' }, bar), el('span', { class: 'wf-note' }, row.note)));
    }
    container.append(table);
  }

  function renderPercentiles(table, model) {
    const rows = [['time to first token', model.ttftMs, 'ttft'], ['inter-token', model.interTokenMs, 'itl']];
    table.replaceChildren(el('tr', {}, ...['', 'samples', 'p50', 'p90', 'p99', 'max'].map((h) => el('th', {}, h))));
    for (const [label, samples, key] of rows) {
      const p = specd.charts.percentiles(samples);
      const cells = [p.p50, p.p90, p.p99, p.max].map((v, i) =>
        el('td', { id: `${key}-${['p50', 'p90', 'p99', 'max'][i]}`, dataset: { value: v ?? '' } }, formatMs(v)));
      table.append(el('tr', {}, el('th', {}, label), el('td', { id: `${key}-count` }, String(p.count)), ...cells));
    }
  }

  specd.traceDetails = { fillTooltip, renderWaterfall, renderPercentiles, el };
})();
