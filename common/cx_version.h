/* The coxswain version string, printed by `coxswain version`, sent in the
 * User-Agent and exported as coxswain_build_info. */
#ifndef CX_VERSION_H
#define CX_VERSION_H

#define COXSWAIN_VERSION "0.1.0-dev"

#endif
