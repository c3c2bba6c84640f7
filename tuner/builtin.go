package tuner

// The built-in tuners, registered in one place.
func init() {
	Register(randomInfo())
	Register(gridInfo())
	Register(tpeInfo())
	Register(hyperbandInfo())
	Register(bohbInfo())
	Register(pbtInfo())
	Register(cmaesInfo())
	Register(autoInfo())
	Register(annealInfo())
	Register(evolutionInfo())
	Register(batchInfo())
	Register(gpInfo())
	Register(smacInfo())
	Register(metisInfo())
	Register(nsga2Info())
	Register(motpeInfo())
}
