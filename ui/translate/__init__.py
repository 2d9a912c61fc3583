"""The Translate page's own pieces: the probability table and the teaching model's nearest sentence."""
