"""Link-time guards: ``test`` links a tiny consumer for real, ``order`` computes the order of
static archives (cycles grouped), ``clash`` finds symbols defined twice or exported wrongly."""
