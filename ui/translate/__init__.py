"""The Translate page's own pieces: the probability table, and the teaching model's panels (gold links and AER,
the words it knows, the nearest sentence its grammar has)."""
