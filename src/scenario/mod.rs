//! Published experiments, runnable by name.
