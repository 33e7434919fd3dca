package identity

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// File names inside the config directory.
const (
	KeyFile    = "key.pem"
	CertFile   = "cert.pem"
	PairedFile = "paired.json"
)

// ErrCorrupt means a stored identity or paired set cannot be read back.
var ErrCorrupt = errors.New("identity: stored identity is damaged")

// Identity is this device's certificate and the ID derived from it.
type Identity struct {
	Cert tls.Certificate // leaf parsed; private key present
	ID   DeviceID
}

// LoadOrCreate reads the key and certificate from dir, or creates them the
// first time. dir is created 0700 and the files 0600: the key is the device.
// Existing files with looser modes are tightened.
func LoadOrCreate(dir string, now time.Time, random io.Reader) (*Identity, error) {
	if err := ensureDir(dir); err != nil {
		return nil, err
	}
	keyPath, certPath := filepath.Join(dir, KeyFile), filepath.Join(dir, CertFile)
	_, kerr := os.Stat(keyPath)
	_, cerr := os.Stat(certPath)
	if errors.Is(kerr, fs.ErrNotExist) && errors.Is(cerr, fs.ErrNotExist) {
		if err := create(keyPath, certPath, now, random); err != nil {
			return nil, err
		}
	}
	for _, p := range []string{keyPath, certPath} {
		if err := os.Chmod(p, 0o600); err != nil {
			return nil, fmt.Errorf("identity: restrict %s: %w", p, err)
		}
	}
	cert, err := tls.LoadX509KeyPair(certPath, keyPath)
	if err != nil {
		return nil, fmt.Errorf("load %s and %s (delete both to make a new identity): %w: %v", certPath, keyPath, ErrCorrupt, err)
	}
	return &Identity{Cert: cert, ID: IDFromCert(cert.Certificate[0])}, nil
}

func ensureDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("identity: create %s: %w", dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("identity: restrict %s: %w", dir, err)
	}
	return nil
}

func create(keyPath, certPath string, now time.Time, random io.Reader) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), random)
	if err != nil {
		return fmt.Errorf("identity: generate key: %w", err)
	}
	serial := make([]byte, 16)
	if _, err := io.ReadFull(random, serial); err != nil {
		return fmt.Errorf("identity: read random serial: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: new(big.Int).SetBytes(serial),
		Subject:      pkix.Name{CommonName: "homering"},
		// Peers pin the hash, never the dates; a long validity avoids a
		// device silently changing identity when it would have expired.
		NotBefore:             now.Add(-24 * time.Hour),
		NotAfter:              now.AddDate(50, 0, 0),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"homering"},
	}
	der, err := x509.CreateCertificate(random, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return fmt.Errorf("identity: self-sign certificate: %w", err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return fmt.Errorf("identity: encode key: %w", err)
	}
	if err := writeFile0600(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})); err != nil {
		return err
	}
	return writeFile0600(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// writeFile0600 writes atomically (temp file, then rename) so a crash never
// leaves half a key.
func writeFile0600(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-*")
	if err != nil {
		return fmt.Errorf("identity: write %s: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		_ = tmp.Close() // the error to report is the one above
		return fmt.Errorf("identity: write %s: %w", path, err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close() // the error to report is the one above
		return fmt.Errorf("identity: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("identity: write %s: %w", path, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("identity: write %s: %w", path, err)
	}
	return nil
}

// PairedDevice is one pinned peer.
type PairedDevice struct {
	ID       DeviceID  `json:"id"`
	Name     string    `json:"name"`
	PairedAt time.Time `json:"paired_at"`
}

// Paired is the set of devices whose certificates this device trusts.
// It is a value: the caller guards it and saves it after changes.
type Paired struct {
	Devices []PairedDevice // sorted by ID, unique
}

type pairedFile struct {
	Version int            `json:"version"`
	Devices []PairedDevice `json:"devices"`
}

// Has reports whether id is paired.
func (p *Paired) Has(id DeviceID) bool {
	_, ok := p.find(id)
	return ok
}

// Get returns the paired entry for id.
func (p *Paired) Get(id DeviceID) (PairedDevice, bool) {
	i, ok := p.find(id)
	if !ok {
		return PairedDevice{}, false
	}
	return p.Devices[i], true
}

// Add pins d, replacing an entry with the same ID.
func (p *Paired) Add(d PairedDevice) {
	if i, ok := p.find(d.ID); ok {
		p.Devices[i] = d
		return
	}
	p.Devices = append(p.Devices, d)
	slices.SortFunc(p.Devices, func(a, b PairedDevice) int { return slices.Compare(a.ID[:], b.ID[:]) })
}

// Remove unpins id and reports whether it was paired.
func (p *Paired) Remove(id DeviceID) bool {
	i, ok := p.find(id)
	if ok {
		p.Devices = slices.Delete(p.Devices, i, i+1)
	}
	return ok
}

func (p *Paired) find(id DeviceID) (int, bool) {
	for i, d := range p.Devices {
		if d.ID == id {
			return i, true
		}
	}
	return 0, false
}

// LoadPaired reads dir/paired.json; a missing file is an empty set.
func LoadPaired(dir string) (Paired, error) {
	path := filepath.Join(dir, PairedFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Paired{}, nil
	}
	if err != nil {
		return Paired{}, fmt.Errorf("identity: read %s: %w", path, err)
	}
	var f pairedFile
	if err := json.Unmarshal(b, &f); err != nil {
		return Paired{}, fmt.Errorf("read %s (fix or delete it, then pair again): %w: %v", path, ErrCorrupt, err)
	}
	if f.Version != 1 {
		return Paired{}, fmt.Errorf("read %s: version %d is not 1 (written by a newer Homering?): %w", path, f.Version, ErrCorrupt)
	}
	var p Paired
	for _, d := range f.Devices {
		p.Add(d)
	}
	return p, nil
}

// SavePaired writes the set to dir/paired.json (0600, atomically).
func SavePaired(dir string, p Paired) error {
	if err := ensureDir(dir); err != nil {
		return err
	}
	devs := p.Devices
	if devs == nil {
		devs = []PairedDevice{}
	}
	b, err := json.MarshalIndent(pairedFile{Version: 1, Devices: devs}, "", "  ")
	if err != nil {
		return fmt.Errorf("identity: encode paired set: %w", err)
	}
	return writeFile0600(filepath.Join(dir, PairedFile), append(b, '\n'))
}
