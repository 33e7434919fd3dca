package profile

import "homering/engine/profile/sysinfo"

var (
	sysDiskQuick = sysinfo.DiskLimits{SeqBytes: 8 << 20, RandIOs: 32}
	sysDiskFake  = sysinfo.Disk{SeqBytesPerSec: 1e9, RandBytesPerSec: 1e8}
)
