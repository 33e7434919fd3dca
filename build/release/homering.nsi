; Homering's Windows installer (NSIS 3.08 from Debian), built by
; build/release.sh: makensis -DVERSION=… -DSRCDIR=… -DOUTFILE=… -DLINKPORT=…
; Per machine: Program Files\Homering, a Start menu shortcut, start at login
; (HKLM Run key), an inbound firewall rule for the link port on private
; networks only, an Add/Remove Programs entry, and an uninstaller that
; removes all of them. The agent's own config and caches (%AppData%,
; %LocalAppData%) are the user's and stay.
Unicode true
Target amd64-unicode
SetCompressor /SOLID lzma
RequestExecutionLevel admin

!define APPKEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\Homering"
!define RUNKEY "Software\Microsoft\Windows\CurrentVersion\Run"
!define RULE "Homering link"

Name "Homering"
OutFile "${OUTFILE}"
InstallDir "$PROGRAMFILES64\Homering"
Icon "${SRCDIR}/homering.ico"
UninstallIcon "${SRCDIR}/homering.ico"
VIProductVersion "0.0.0.0"
VIAddVersionKey "ProductName" "Homering"
VIAddVersionKey "ProductVersion" "${VERSION}"
VIAddVersionKey "FileVersion" "${VERSION}"
VIAddVersionKey "FileDescription" "Homering installer"
VIAddVersionKey "LegalCopyright" "Homering maintainers"

Page directory
Page instfiles
UninstPage uninstConfirm
UninstPage instfiles

Function .onInit
	SetRegView 64
	SetShellVarContext all
FunctionEnd

Function un.onInit
	SetRegView 64
	SetShellVarContext all
FunctionEnd

Section "Homering"
	SetOutPath "$INSTDIR"
	File "${SRCDIR}/homering.exe"
	; The GUI-subsystem build of the same program (no console window): the
	; tray agent the shortcut and the Run key start. homering.exe is the CLI.
	File "${SRCDIR}/homering-app.exe"
	File "${SRCDIR}/lpsolve55.dll"
	File "${SRCDIR}/lpsolve55-LICENSE.txt"
	File "${SRCDIR}/lpsolve55-SOURCE.txt"
	File "${SRCDIR}/homering.ico"
	; ggml's CPU variant DLLs (lib\homering-cpu\ollama-<version>): the exe
	; loads the best this CPU runs at start.
	File /r "${SRCDIR}/lib"
	WriteUninstaller "$INSTDIR\uninstall.exe"

	CreateShortcut "$SMPROGRAMS\Homering.lnk" "$INSTDIR\homering-app.exe" "" "$INSTDIR\homering.ico"
	WriteRegStr HKLM "${RUNKEY}" "Homering" '"$INSTDIR\homering-app.exe"'

	; Private networks only: the ring is a home's. Replaced, not doubled, on
	; a reinstall. (Wine's netsh is a stub that accepts and does nothing.)
	nsExec::ExecToLog 'netsh advfirewall firewall delete rule name="${RULE}"'
	Pop $0
	; One rule per program that listens: the tray agent, and `homering
	; headless` run from a terminal. Both go with the name.
	nsExec::ExecToLog 'netsh advfirewall firewall add rule name="${RULE}" dir=in action=allow protocol=TCP localport=${LINKPORT} profile=private program="$INSTDIR\homering-app.exe"'
	Pop $0
	nsExec::ExecToLog 'netsh advfirewall firewall add rule name="${RULE}" dir=in action=allow protocol=TCP localport=${LINKPORT} profile=private program="$INSTDIR\homering.exe"'
	Pop $0

	WriteRegStr HKLM "${APPKEY}" "DisplayName" "Homering"
	WriteRegStr HKLM "${APPKEY}" "DisplayVersion" "${VERSION}"
	WriteRegStr HKLM "${APPKEY}" "Publisher" "Homering maintainers"
	WriteRegStr HKLM "${APPKEY}" "DisplayIcon" "$INSTDIR\homering.ico"
	WriteRegStr HKLM "${APPKEY}" "InstallLocation" "$INSTDIR"
	WriteRegStr HKLM "${APPKEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
	WriteRegStr HKLM "${APPKEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
	WriteRegDWORD HKLM "${APPKEY}" "NoModify" 1
	WriteRegDWORD HKLM "${APPKEY}" "NoRepair" 1
SectionEnd

Section "Uninstall"
	nsExec::ExecToLog 'netsh advfirewall firewall delete rule name="${RULE}"'
	Pop $0
	DeleteRegValue HKLM "${RUNKEY}" "Homering"
	DeleteRegKey HKLM "${APPKEY}"
	Delete "$SMPROGRAMS\Homering.lnk"
	Delete "$INSTDIR\homering.exe"
	Delete "$INSTDIR\homering-app.exe"
	Delete "$INSTDIR\lpsolve55.dll"
	Delete "$INSTDIR\lpsolve55-LICENSE.txt"
	Delete "$INSTDIR\lpsolve55-SOURCE.txt"
	Delete "$INSTDIR\homering.ico"
	Delete "$INSTDIR\uninstall.exe"
	RMDir /r "$INSTDIR\lib\homering-cpu"
	RMDir "$INSTDIR\lib"
	RMDir "$INSTDIR"
SectionEnd
