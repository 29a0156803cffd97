"""windowfit's command-line shell: parse, read, call ``fitting``, render."""
