package conn

import (
	"context"

	"github.com/respire/respire/resp"
)

// handshake negotiates the protocol, authenticates with cr, names the connection,
// learns its CLIENT ID and selects the database.
func (c *Conn) handshake(ctx context.Context, opts *Options, cr Credentials) error {
	proto := opts.Protocol
	if proto == 0 {
		proto = 3
	}
	hello := []any{"HELLO", proto}
	if cr.Password != "" {
		hello = append(hello, "AUTH", username(cr), cr.Password)
	}
	if opts.ClientName != "" {
		hello = append(hello, "SETNAME", opts.ClientName)
	}
	v, err := c.Do(ctx, hello...)
	switch {
	case err == nil:
		if err := c.learnHello(v); err != nil {
			return err
		}
	case resp.IsUnknownCommand(err, "HELLO") || resp.HasCode(err, "NOPROTO"):
		if err := c.legacyHandshake(ctx, opts, cr); err != nil {
			return err
		}
	default:
		return err
	}
	if c.ident.id == 0 {
		if err := c.learnClientID(ctx); err != nil {
			return err
		}
	}
	if opts.DB != 0 {
		if _, err := c.Do(ctx, "SELECT", opts.DB); err != nil {
			return err
		}
	}
	if cr.Password != "" {
		c.auth.current = cr
	}
	return nil
}

// credentialsOf returns the credentials a dial authenticates with: the provider's, or
// Username and Password.
func credentialsOf(ctx context.Context, opts *Options) (Credentials, error) {
	if opts.Credentials == nil {
		return Credentials{Username: opts.Username, Password: opts.Password}, nil
	}
	cr, err := opts.Credentials(ctx)
	if err == nil && cr.Password == "" {
		err = ErrNoPassword
	}
	return cr, err
}

func username(cr Credentials) string {
	if cr.Username == "" {
		return "default"
	}
	return cr.Username
}

// learnHello reads HELLO's map (RESP3) or flat array (HELLO 2): proto, id, server,
// version.
func (c *Conn) learnHello(v resp.Value) error {
	m, err := v.Map()
	if err != nil {
		return err
	}
	if p, err := m["proto"].Int(); err == nil && (p == 2 || p == 3) {
		c.ident.proto = int(p)
	}
	if id, err := m["id"].Int(); err == nil {
		c.ident.id = id
	}
	c.ident.server, _ = m["server"].Text()
	c.ident.version, _ = m["version"].Text()
	return nil
}

// legacyHandshake is the RESP2 path for servers without HELLO (or without RESP3).
func (c *Conn) legacyHandshake(ctx context.Context, opts *Options, cr Credentials) error {
	c.ident.proto = 2
	if cr.Password != "" {
		auth := []any{"AUTH", cr.Password}
		if cr.Username != "" {
			auth = []any{"AUTH", cr.Username, cr.Password}
		}
		if _, err := c.Do(ctx, auth...); err != nil {
			return err
		}
	}
	if opts.ClientName != "" {
		if _, err := c.Do(ctx, "CLIENT", "SETNAME", opts.ClientName); err != nil {
			return err
		}
	}
	return nil
}

// learnClientID asks CLIENT ID when HELLO did not say. A server that refuses (an ACL
// without CLIENT ID, a very old server) leaves the ID unknown rather than failing the
// connection: only fencing needs it, and fencing reports that it cannot work.
func (c *Conn) learnClientID(ctx context.Context) error {
	v, err := c.Do(ctx, "CLIENT", "ID")
	if _, refused := resp.AsServerError(err); refused {
		return nil
	}
	if err != nil {
		return err
	}
	if id, err := v.Int(); err == nil {
		c.ident.id = id
	}
	return nil
}
