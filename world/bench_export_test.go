package world

// Unload checkpoints and stops the host of region (x, y), as the janitor does once the region's
// grace has passed, so that a benchmark can time one unload; false when it is not loaded.
func (s *Server) Unload(x, y int) bool {
	r, ok := s.def.Region(x, y)
	if !ok {
		return false
	}
	s.mu.Lock()
	rg := s.regions[r.Room()]
	if rg.state != loaded {
		s.mu.Unlock()
		return false
	}
	rg.setState(unloading)
	s.mu.Unlock()
	s.unload(rg)
	return true
}
