"""Indexing: from a directory's files to the rows, vectors and shared record that search reads."""
