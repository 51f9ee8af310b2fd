// The cluster map: every experience of the axis as a point placed by the worker's 2-D layout,
// coloured by cluster (noise grey). Hover shows the goal; a click lists the cluster's members,
// most typical first, and the value validated against it.
(function () {
  const canvas = document.getElementById("cluster-map");
  if (!canvas) return;
  const axis = canvas.dataset.axis;
  const tip = document.getElementById("map-tip");
  const status = document.getElementById("map-status");
  const detail = document.getElementById("cluster-detail");
  const ctx = canvas.getContext("2d");
  const pad = 14;
  let data = null;
  let sx = [], sy = [];
  let selected = null;

  for (const swatch of document.querySelectorAll(".swatch")) {
    swatch.style.background = window.lmsColour(Number(swatch.dataset.label));
  }

  function place() {
    const p = data.points;
    let minX = Infinity, maxX = -Infinity, minY = Infinity, maxY = -Infinity;
    for (let i = 0; i < p.x.length; i++) {
      minX = Math.min(minX, p.x[i]); maxX = Math.max(maxX, p.x[i]);
      minY = Math.min(minY, p.y[i]); maxY = Math.max(maxY, p.y[i]);
    }
    const w = canvas.width - 2 * pad, h = canvas.height - 2 * pad;
    const spanX = maxX - minX || 1, spanY = maxY - minY || 1;
    sx = p.x.map((x) => pad + ((x - minX) / spanX) * w);
    sy = p.y.map((y) => pad + ((y - minY) / spanY) * h);
  }

  function draw() {
    const p = data.points;
    ctx.clearRect(0, 0, canvas.width, canvas.height);
    // Noise first, so that clusters stay visible on top of it.
    for (const pass of [true, false]) {
      for (let i = 0; i < sx.length; i++) {
        const noise = p.label[i] < 0;
        if (noise !== pass) continue;
        const dim = selected !== null && p.label[i] !== selected;
        ctx.globalAlpha = dim ? 0.15 : 0.85;
        ctx.fillStyle = window.lmsColour(p.label[i]);
        ctx.beginPath();
        ctx.arc(sx[i], sy[i], noise ? 2.2 : 3.2, 0, 2 * Math.PI);
        ctx.fill();
      }
    }
    ctx.globalAlpha = 1;
  }

  function nearest(event) {
    const box = canvas.getBoundingClientRect();
    const x = (event.clientX - box.left) * (canvas.width / box.width);
    const y = (event.clientY - box.top) * (canvas.height / box.height);
    let best = -1, bestD = 64;
    for (let i = 0; i < sx.length; i++) {
      const d = (sx[i] - x) ** 2 + (sy[i] - y) ** 2;
      if (d < bestD) { bestD = d; best = i; }
    }
    return best;
  }

  function text(tag, content, cls) {
    const node = document.createElement(tag);
    node.textContent = content;
    if (cls) node.className = cls;
    return node;
  }

  async function showCluster(clusterId) {
    const cluster = data.clusters.find((c) => c.cluster_id === clusterId);
    if (!cluster) return;
    selected = cluster.label;
    draw();
    detail.replaceChildren(text("h2", clusterId + " · " + cluster.size + " members"));
    if (cluster.value) {
      const value = text("p", "", "item value");
      value.append(text("b", "Value: "), document.createTextNode(cluster.value.text));
      detail.append(value);
    } else {
      detail.append(text("p", "No value validated against this cluster yet.", "hint"));
    }
    const answer = await fetch("/api/clusters/" + encodeURIComponent(clusterId) + "/members?limit=20");
    const found = await answer.json();
    if (!answer.ok) { detail.append(text("p", found.error.message, "error")); return; }
    const list = document.createElement("ol");
    list.className = "members";
    for (const m of found.members) {
      const item = text("li", m.goal + " ");
      item.append(text("span", m.outcome_status, "tag " + m.outcome_status));
      list.append(item);
    }
    detail.append(text("h3", "Most typical first"), list);
  }

  canvas.addEventListener("mousemove", (event) => {
    if (!data) return;
    const i = nearest(event);
    if (i < 0) { tip.hidden = true; return; }
    const label = data.points.label[i];
    tip.textContent = data.points.goal[i] + (label < 0 ? " (no cluster)" : " · cluster " + label);
    tip.style.left = sx[i] * (canvas.getBoundingClientRect().width / canvas.width) + 12 + "px";
    tip.style.top = sy[i] * (canvas.getBoundingClientRect().height / canvas.height) + 12 + "px";
    tip.hidden = false;
  });
  canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
  canvas.addEventListener("click", (event) => {
    if (!data) return;
    const i = nearest(event);
    if (i >= 0 && data.points.label[i] >= 0) showCluster(data.points.cluster_id[i]);
  });
  for (const link of document.querySelectorAll(".cluster-link")) {
    link.addEventListener("click", (event) => { event.preventDefault(); showCluster(link.dataset.cluster); });
  }

  (async function load() {
    const started = performance.now();
    const answer = await fetch("/api/clusters/" + encodeURIComponent(axis) + "/map");
    const found = await answer.json();
    if (!answer.ok) { status.textContent = found.error.message; status.className = "error"; return; }
    data = found;
    place();
    draw();
    const drawn = performance.now();
    status.textContent = data.points.x.length + " points";
    canvas.dataset.points = String(data.points.x.length);
    canvas.dataset.drawnMs = String(Math.round(drawn - started));
    // From navigation start: the page, the layout's fetch and the drawing, as a person waits.
    canvas.dataset.drawnAt = String(Math.round(drawn));
    canvas.dataset.ready = "1";
    if (location.hash.startsWith("#cluster_")) showCluster(location.hash.slice(1));
  })();
})();
