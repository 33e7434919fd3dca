/*
 * A test-only stand-in for Windows' bcryptprimitives.dll inside the Wine
 * prefix build/windows.sh makes. Wine 8.0 (Debian 12) has no ProcessPrng,
 * which Go >= 1.22 programs load at start for their random numbers, so every
 * Go program dies there ("bcryptprimitives.dll not found"). This fills the
 * buffer from RtlGenRandom (advapi32's SystemFunction036), which Wine has.
 * Never shipped: real Windows 10+ has the real DLL.
 */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len)
{
	while (len > 0) {
		/* RtlGenRandom takes a ULONG length; ProcessPrng a SIZE_T. */
		ULONG n = len > 0x40000000 ? 0x40000000 : (ULONG)len;
		if (!SystemFunction036(data, n))
			return FALSE;
		data += n;
		len -= n;
	}
	return TRUE;
}
