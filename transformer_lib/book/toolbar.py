"""The toolbar every figure has, in Jupyter (:mod:`.style` gives it to plotly's renderer) and on the website
(:mod:`transformer_lib.site.figures` passes it to ``Plotly.newPlot``): one setting, so the two cannot differ."""

from __future__ import annotations

from typing import Any

# No plotly logo, and no "Share chart..." button, which would upload the figure's data to an
# outside service. Zoom, pan and "download as PNG" stay; they work on the reader's machine only.
# (showEditInChartStudio is false by default in plotly.js, and plotly.py warns about it as an unknown option.)
PLOTLY_CONFIG: dict[str, Any] = {
    "displaylogo": False,
    "showSendToCloud": False,
    "modeBarButtonsToRemove": ["sendChartToCloud", "sendDataToCloud", "editInChartStudio"],
    "plotlyServerURL": "",
}
