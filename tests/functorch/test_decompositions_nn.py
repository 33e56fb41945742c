SAMPLED = set()
