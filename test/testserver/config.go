package testserver

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
)

// Config describes a server to start. The zero value is a plain server
// without persistence, listening on one free loopback port, whose default
// user has no password.
type Config struct {
	// Users are ACL users created at start, written to an ACL file in the
	// server's directory. The default user stays enabled, with every
	// permission and no password unless RequirePass is set; a User named
	// "default" replaces that line instead.
	Users []User

	// RequirePass is the password of the default user. The command methods
	// authenticate with it.
	RequirePass string

	// TLS makes the server also serve TLS on a second free port (see
	// [Server.TLSAddr]), with a CA and a server certificate for 127.0.0.1,
	// ::1 and localhost generated into the server's directory at start.
	// Client certificates are not required unless ClientAuth is set.
	TLS bool

	// ClientAuth requires TLS clients to present a certificate signed by the
	// generated CA (tls-auth-clients yes). A client certificate is generated
	// too and [Server.ClientTLSConfig] presents it. It implies TLS.
	ClientAuth bool

	// Args are extra redis-server arguments, such as "--maxmemory", "10mb".
	// They come after the harness's own, so they override them:
	// "--appendonly", "yes" turns persistence on.
	Args []string

	// Binary is the redis-server executable, a path or a name looked up in
	// PATH. Empty means "redis-server".
	Binary string

	// ConfigFile, when set, is passed as the first argument, before the
	// harness's own: the configuration file the server loads (and may
	// rewrite). redis-sentinel needs one, since it saves its state there.
	ConfigFile string

	// noChannelRules leaves "&*" out of the default user's ACL line, for Redis
	// 6.0, which refuses the ACL file with it (channel rules came in 6.2) and
	// lets every user use every channel.
	noChannelRules bool
}

// User is an ACL user of a [Config]. The ACL line written for it is
// "user Name on >Password Rules..." ("nopass" when Password is empty, which
// lets any password in). Names, passwords and rules must not contain
// whitespace, quotes or control characters.
type User struct {
	Name     string
	Password string
	// Rules are ACL rules such as "+@all", "-flushall", "~app:*", "&*".
	// With no rules the user can authenticate but run nothing.
	Rules []string
}

// installHint is part of every message about a missing binary.
const installHint = "install it with `apt-get install -y redis-server redis-sentinel redis-tools` (`make test` installs them)"

// File names inside a server's directory.
const (
	logFile     = "redis.log"
	aclFile     = "users.acl"
	caCertFile  = "ca.crt"
	srvCertFile = "server.crt"
	srvKeyFile  = "server.key"
	cliCertFile = "client.crt"
	cliKeyFile  = "client.key"
)

// wantsTLS reports whether the server serves TLS.
func (c *Config) wantsTLS() bool { return c.TLS || c.ClientAuth }

// findBinary resolves the redis-server executable to an absolute path, so it
// does not depend on the directory the process runs in.
func findBinary(name string) (string, error) {
	if name == "" {
		name = "redis-server"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("testserver: %s not found (%v); %s", name, err, installHint)
	}
	return filepath.Abs(path)
}

// validate checks what the ACL file cannot express.
func (c *Config) validate() error {
	hasDefault := false
	for _, u := range c.Users {
		if u.Name == "" {
			return errors.New("testserver: a User has no Name")
		}
		if u.Name == "default" {
			hasDefault = true
		}
		for _, tok := range append([]string{u.Name, u.Password}, u.Rules...) {
			if !aclSafe(tok) {
				return fmt.Errorf("testserver: user %q: %q has whitespace, quotes or control characters, which an ACL file cannot hold", u.Name, tok)
			}
		}
	}
	if hasDefault && c.RequirePass != "" {
		return errors.New(`testserver: set the default user's password either in RequirePass or in a User named "default", not both`)
	}
	if !aclSafe(c.RequirePass) {
		return errors.New("testserver: RequirePass has whitespace, quotes or control characters, which an ACL file cannot hold")
	}
	return nil
}

func aclSafe(s string) bool {
	return !strings.ContainsFunc(s, func(r rune) bool {
		return r <= ' ' || r == 0x7f || r == '"' || r == '\''
	})
}

// aclLines renders the ACL file, or "" when the server needs none.
func (c *Config) aclLines() string {
	if len(c.Users) == 0 && c.RequirePass == "" {
		return ""
	}
	var b strings.Builder
	hasDefault := false
	for _, u := range c.Users {
		if u.Name == "default" {
			hasDefault = true
		}
		b.WriteString(aclLine(u))
	}
	if !hasDefault {
		// Write the default user out: Redis resets a default user that its
		// ACL file does not mention, so a password must be set here.
		rules := []string{"~*", "&*", "+@all"}
		if c.noChannelRules {
			rules = []string{"~*", "+@all"}
		}
		b.WriteString(aclLine(User{Name: "default", Password: c.RequirePass, Rules: rules}))
	}
	return b.String()
}

func aclLine(u User) string {
	parts := []string{"user", u.Name, "on"}
	if u.Password == "" {
		parts = append(parts, "nopass")
	} else {
		parts = append(parts, ">"+u.Password)
	}
	parts = append(parts, u.Rules...)
	return strings.Join(parts, " ") + "\n"
}

// writeFiles writes what the server reads at start (ACL file, certificates)
// into dir and returns the arguments that point the server at them.
func (c *Config) writeFiles(dir string) (args []string, tlsFiles *certFiles, err error) {
	if acl := c.aclLines(); acl != "" {
		path := filepath.Join(dir, aclFile)
		if err := os.WriteFile(path, []byte(acl), 0o600); err != nil {
			return nil, nil, err
		}
		args = append(args, "--aclfile", path)
	}
	if c.wantsTLS() {
		tlsFiles, err = writeCerts(dir, c.ClientAuth)
		if err != nil {
			return nil, nil, err
		}
	}
	return args, tlsFiles, nil
}

// serverArgs builds the full redis-server command line.
func serverArgs(dir string, port, tlsPort int, fileArgs []string, certs *certFiles, cfg *Config) []string {
	var args []string
	if cfg.ConfigFile != "" {
		args = append(args, cfg.ConfigFile)
	}
	args = append(args,
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", dir,
		"--daemonize", "no",
		"--logfile", "", // standard output, which goes to the log file
		"--save", "",
		"--appendonly", "no",
	)
	args = append(args, fileArgs...)
	if certs != nil {
		authClients := "no"
		if cfg.ClientAuth {
			authClients = "yes"
		}
		args = append(args,
			"--tls-port", strconv.Itoa(tlsPort),
			"--tls-cert-file", certs.serverCert,
			"--tls-key-file", certs.serverKey,
			"--tls-ca-cert-file", certs.caCert,
			"--tls-auth-clients", authClients,
		)
	}
	return append(args, cfg.Args...)
}
