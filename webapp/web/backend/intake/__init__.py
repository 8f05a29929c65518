"""Getting a stream in: an upload checked, its secrets masked and read, under a worker's upload
slots (`ingest`), and which secrets to mask (`masking`)."""
