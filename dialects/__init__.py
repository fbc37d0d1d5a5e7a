"""The tilec dialects: `layout` and `tile` (IRDL sources and thin builders)."""
