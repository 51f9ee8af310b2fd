// One colour per cluster label, the same on the map, its legend and the side panel; noise is grey.
window.lmsColour = function (label) {
  if (label < 0) return "#c0c4cc";
  const hues = [212, 28, 140, 350, 265, 50, 185, 310, 95, 5, 235, 160];
  const hue = hues[label % hues.length];
  const light = 42 + 12 * (Math.floor(label / hues.length) % 3);
  return "hsl(" + hue + ", 70%, " + light + "%)";
};
