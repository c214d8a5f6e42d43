"""The REST API of spec/004 under /v1/organizations/<org>/."""
