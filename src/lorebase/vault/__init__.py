"""Uploaded originals at rest: the data key and sealed names (``keys``), the encrypted blob
store (``blobs``) and re-encryption under a new key (``rotation``).

AES-256-GCM throughout: one random nonce per 1 MB piece of a blob with the document id as
associated data, so a piece cannot be moved to another blob or place unnoticed.
"""
