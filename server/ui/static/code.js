// While any project has vectors pending, refresh the table every two seconds (live progress).
(function () {
  const table = document.getElementById("code-projects");
  if (!table) return;
  function pending() {
    return Array.from(table.querySelectorAll("td.pending")).some((cell) => cell.textContent.trim() !== "0");
  }
  async function refresh() {
    try {
      const answer = await fetch("/api/code", { headers: { Accept: "application/json" } });
      if (!answer.ok) return;
      const data = await answer.json();
      for (const project of data.projects) {
        const row = table.querySelector('tr[data-project="' + CSS.escape(project.project) + '"]');
        if (!row) { location.reload(); return; }
        row.querySelector(".units").textContent = project.units;
        row.querySelector(".pending").textContent = project.vectors_pending;
      }
    } finally {
      if (pending()) setTimeout(refresh, 2000);
    }
  }
  if (pending()) setTimeout(refresh, 2000);
})();
