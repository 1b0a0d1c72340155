"""The preference-interface process: which pair to ask about and when, who answers (synthetic, window +
terminal, the web page), and the label journal."""
