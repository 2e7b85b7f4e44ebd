"""SLO benchmark (issues 18 and 31): goodput within the TTFT objective, shedding and refusals of
our gateway against direct round-robin, the peer gateways and a refuse-everything server on one
simulated fleet; closed-loop ramps onto one engine; several gateway processes on one fleet."""
