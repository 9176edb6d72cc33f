# recalib.gp — recalibration events per run of each recipe, by block, GEMM
# and operand: a panel per event kind, a column per recipe, a row per site,
# the count per run written in its cell. Data and variables: fig_recalib.c.
if (!exists("plotsdir")) plotsdir = system("dirname ".ARG0)
load plotsdir."/style.gp"

# inches: site labels at the left, recipe labels (slanted) below, titles above
left_in = 1.05
bottom_in = 0.75
top_in = 0.42
gap_in = 0.12
panel_in = (width - left_in - 0.1 - gap_in * (nkinds - 1)) / nkinds

unset grid
unset colorbox
set border 15 lw 0.6
set xrange [-0.5:nrecipes-0.5]
set yrange [nsites-0.5:-0.5]
set cbrange [0:cbmax]
# white (none) to Okabe-Ito blue: black numbers stay readable on every cell
set palette defined (0 "#ffffff", 1 "#cfe3f3", 2 "#7fb7e0", 3 "#3a8fc9")
set xtics () rotate by 35 right scale 0 font ",7" noenhanced
do for [i=1:nrecipes] { set xtics add (word(recipes, i) i-1) }
set ytics () scale 0 font ",6.5" noenhanced
do for [j=1:nsites] { set ytics add (word(sites, j) j-1) }
set label 99 "recalibration events per run (mean over the recipe's runs)" at screen 0.5, screen 1 - 0.12/height center font ",8"

set multiplot
do for [k=1:nkinds] {
    x0 = (left_in + (k - 1) * (panel_in + gap_in)) / width
    set lmargin at screen x0
    set rmargin at screen x0 + panel_in / width
    set tmargin at screen 1 - top_in / height
    set bmargin at screen bottom_in / height
    set title word(kindtitles, k) noenhanced font ",8" offset 0, -0.6
    if (k > 1) { unset ytics; unset label 99 }
    plot datafile index k-1 using 1:2:3 with image pixels notitle, \
         '' index k-1 using 1:2:($4 > 0 ? sprintf("%.3g", $3) : "") with labels font ",6" notitle, \
         '' index k-1 using 1:2:($4 > 0 ? "" : "0") with labels font ",6" tc rgb "#b0b0b0" notitle
}
unset multiplot
