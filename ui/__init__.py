"""Figures, widgets and background jobs of the Streamlit explorer."""
