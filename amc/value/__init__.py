"""Value functions f(s) (predicted future reward) that twist the SMC weights."""
