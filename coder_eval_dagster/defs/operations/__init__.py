"""Operations domain: the file sensor and the nightly schedule."""
