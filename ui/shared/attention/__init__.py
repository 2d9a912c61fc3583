"""The attention explorer of a translation: its maps by family, the lens switch, gold links, the package's SVG views
on a page."""
