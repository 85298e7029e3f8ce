"""Hybrid search: BM25 and dense arms, fused by reciprocal rank, hydrated with provenance."""
