package identity

import (
	"crypto/sha256"

	"homering/discovery/deviceid"
)

// DeviceID is SHA-256 of a device's certificate (DER): the one device-ID type,
// defined in the leaf package discovery/deviceid so that pure cores (halda,
// the ring's wire) can carry it. The zero value is no device.
type DeviceID = deviceid.ID

// Sentinels of device ID parsing (deviceid's).
var (
	ErrIDLength = deviceid.ErrLength
	ErrIDCheck  = deviceid.ErrCheck
	ErrIDChars  = deviceid.ErrChars
)

// IDFromCert returns the device ID of a DER certificate.
func IDFromCert(der []byte) DeviceID { return sha256.Sum256(der) }

// ParseDeviceID accepts the readable form (check characters verified) or the
// compact form, in any case, with or without dashes and spaces.
func ParseDeviceID(s string) (DeviceID, error) { return deviceid.Parse(s) }
