"""Every chart of the app, the notebook and the HTML report, built with Altair (Vega-Lite) on one theme.

- `theme`: the font, the sizes (everyday and class mode) and the colours, registered once as an Altair theme;
  the HTML views of `transformer.explain.views` read them too;
- `heatmap`: a matrix with token labels (attention maps, masks, statistics), cell numbers where they fit, a click
  selection over cells, gold links, a picked cell;
- `grid`: every layer's and head's map at once: `head_grid` to pick a head (a click selects it), `attention_grid`
  to read every head, each map labelled with its tokens (`transformer.explain.views.heatmaps`);
- `lines`: values against step or position, a line per series;
- `render`: static SVG and PNG through vl-convert (the HTML report, downloads, exports).

Pure functions of numbers and labels, no streamlit: the app draws their charts with `st.altair_chart`
(`ui.shared.charts.show`), a notebook shows them as they are.
"""
