"""SLO benchmark (issue 18): goodput within the TTFT objective, shedding and refusals of our
gateway against direct round-robin and the peer gateways on one simulated fleet."""
