"""A coder-eval plugin (for the tests): the `echo` agent type and the `echo_says` criterion."""
