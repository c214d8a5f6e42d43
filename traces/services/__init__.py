"""Writes. Every change to the store goes through a function here."""
