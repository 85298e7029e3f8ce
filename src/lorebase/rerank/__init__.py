"""Rerankers: score (query, passage) pairs to reorder fused search candidates."""
