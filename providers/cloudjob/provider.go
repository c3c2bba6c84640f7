package cloudjob

import (
	"context"
	"errors"

	"github.com/trialform/trialform/providers"
)

// Provider is the providers.Provider New builds over one API.
type Provider struct {
	api  API
	opts Options
}

// New returns the provider running trials as jobs of api. The returned
// provider is also a Lister, Importer, LogStreamer, Locator and
// ReadParallelism; a SpecDiffer when api is a SpecRenderer.
func New(api API, opts Options) *Provider {
	return &Provider{api: api, opts: opts}
}

var errTODO = errors.New("cloudjob: not implemented yet")

func (p *Provider) Kind() string                       { return p.opts.Kind }
func (p *Provider) Validate(ctx context.Context) error { return errTODO }
func (p *Provider) Start(ctx context.Context, req providers.StartRequest) (providers.Handle, error) {
	return nil, errTODO
}
func (p *Provider) Read(ctx context.Context, req providers.ReadRequest) (providers.Observation, error) {
	return providers.Observation{}, errTODO
}
func (p *Provider) Stop(ctx context.Context, req providers.StopRequest) error { return errTODO }
func (p *Provider) Close() error                                              { return nil }

var _ providers.Provider = (*Provider)(nil)
