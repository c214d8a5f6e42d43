"""Reads shared by the pages, the API and the commands."""
