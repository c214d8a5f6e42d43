"""Ways in for files: format detection, one adapter per format, events -> blocks."""
