"""What keeps a worker's memory bounded: the LRU of finished trace views by weight (`cache`) and
the bytes of views being made or held by their requests (`inflight`)."""
