"""What a reader looks at: figures, tables and the sentences that interpret them."""
