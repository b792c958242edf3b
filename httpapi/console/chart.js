// A small time-series chart drawn on a canvas: lines over a time window,
// with a grid, time and value labels. SY.chart(canvas) returns
// {draw(series, t0, t1)}; series are [{color, pts: [[ms, value], ...]}]
// with pts in time order.
'use strict';
(() => {
  const palette = ['#1f6feb', '#d4662a', '#1a7f37', '#8250df', '#bf3989', '#0a8a8a', '#9a6700', '#cf222e'];

  // nice picks a round step for about n ticks over span.
  function nice(span, n) {
    const raw = span / n;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    const f = raw / p;
    return (f < 1.5 ? 1 : f < 3 ? 2 : f < 7 ? 5 : 10) * p;
  }

  function fmtNum(v, step) {
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(1) + 'G';
    if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
    if (a >= 1e4) return (v / 1e3).toFixed(0) + 'k';
    const d = step >= 1 ? 0 : Math.min(4, Math.ceil(-Math.log10(step)));
    return v.toFixed(d);
  }

  const pad2 = (n) => String(n).padStart(2, '0');
  const fmtTime = (ms) => {
    const d = new Date(ms);
    return pad2(d.getHours()) + ':' + pad2(d.getMinutes()) + ':' + pad2(d.getSeconds());
  };

  function chart(canvas) {
    const ctx = canvas.getContext('2d');
    const cssH = Number(canvas.getAttribute('height')) || 200;
    return {
      draw(series, t0, t1) {
        const box = getComputedStyle(canvas.parentElement);
        const w = Math.max(160, Math.floor(canvas.parentElement.clientWidth - parseFloat(box.paddingLeft) - parseFloat(box.paddingRight)));
        const dpr = window.devicePixelRatio || 1;
        if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(cssH * dpr)) {
          canvas.width = Math.round(w * dpr);
          canvas.height = Math.round(cssH * dpr);
          canvas.style.width = w + 'px';
          canvas.style.height = cssH + 'px';
        }
        const cs = getComputedStyle(document.documentElement);
        const muted = cs.getPropertyValue('--muted').trim() || '#666';
        const line = cs.getPropertyValue('--line').trim() || '#ddd';
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        ctx.clearRect(0, 0, w, cssH);
        ctx.font = '11px system-ui, sans-serif';

        let lo = Infinity, hi = -Infinity;
        for (const s of series) {
          for (const p of s.pts) {
            if (p[0] < t0 || p[0] > t1) continue;
            if (p[1] < lo) lo = p[1];
            if (p[1] > hi) hi = p[1];
          }
        }
        const empty = lo === Infinity;
        if (empty) { lo = 0; hi = 1; }
        if (hi === lo) { hi += Math.abs(hi) * 0.1 || 1; lo -= Math.abs(lo) * 0.1 || 1; }
        const step = nice(hi - lo, cssH < 120 ? 2 : 4);
        lo = Math.floor(lo / step) * step;
        hi = Math.ceil(hi / step) * step;

        let left = 0;
        for (let v = lo; v <= hi + step / 2; v += step) left = Math.max(left, ctx.measureText(fmtNum(v, step)).width);
        left = Math.ceil(left) + 8;
        const top = 6, bottom = cssH - 18, right = w - 6;
        const x = (t) => left + (t - t0) / (t1 - t0) * (right - left);
        const y = (v) => bottom - (v - lo) / (hi - lo) * (bottom - top);

        ctx.strokeStyle = line;
        ctx.fillStyle = muted;
        ctx.lineWidth = 1;
        ctx.textBaseline = 'middle';
        ctx.textAlign = 'right';
        for (let v = lo; v <= hi + step / 2; v += step) {
          const yy = Math.round(y(v)) + 0.5;
          ctx.beginPath(); ctx.moveTo(left, yy); ctx.lineTo(right, yy); ctx.stroke();
          ctx.fillText(fmtNum(v, step), left - 4, yy);
        }
        const span = t1 - t0;
        const tstep = [1, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600].map((s) => s * 1000)
          .find((s) => span / s <= Math.max(2, Math.floor((right - left) / 70))) || 3600000;
        ctx.textAlign = 'center';
        ctx.textBaseline = 'top';
        for (let t = Math.ceil(t0 / tstep) * tstep; t <= t1; t += tstep) {
          const xx = Math.round(x(t)) + 0.5;
          ctx.beginPath(); ctx.moveTo(xx, top); ctx.lineTo(xx, bottom); ctx.stroke();
          const label = fmtTime(t);
          const tw = ctx.measureText(label).width / 2;
          if (xx - tw >= left - 2 && xx + tw <= w) ctx.fillText(label, xx, bottom + 4);
        }
        let drawn = 0;
        for (const s of series) for (const p of s.pts) if (p[0] >= t0 && p[0] <= t1) drawn++;
        canvas.dataset.points = drawn;
        if (empty) {
          ctx.textBaseline = 'middle';
          ctx.fillText('No data in this window yet', (left + right) / 2, (top + bottom) / 2);
          return;
        }
        ctx.save();
        ctx.beginPath();
        ctx.rect(left, top - 2, right - left, bottom - top + 4);
        ctx.clip();
        ctx.lineWidth = 1.75;
        ctx.lineJoin = 'round';
        for (const s of series) {
          ctx.strokeStyle = s.color;
          ctx.fillStyle = s.color;
          ctx.beginPath();
          let n = 0, lx = 0, ly = 0;
          for (const p of s.pts) {
            if (p[0] < t0 - 60000) continue;
            lx = x(p[0]); ly = y(p[1]);
            if (n++) ctx.lineTo(lx, ly); else ctx.moveTo(lx, ly);
          }
          ctx.stroke();
          if (n) { ctx.beginPath(); ctx.arc(lx, ly, 2.5, 0, 2 * Math.PI); ctx.fill(); }
        }
        ctx.restore();
      },
    };
  }

  window.SY.chart = chart;
  window.SY.palette = palette;
})();
