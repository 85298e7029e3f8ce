"""Ingestion: finding files in sources and feeding them through the pipeline."""
