"""Browser-facing views: one module a page."""
